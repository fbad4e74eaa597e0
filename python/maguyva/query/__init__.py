"""From a question to an answer: syntax, intent, routing, and the engine that fuses."""
