"""How people and programs reach Maguyva: the CLI, the MCP server, output, the demo."""
