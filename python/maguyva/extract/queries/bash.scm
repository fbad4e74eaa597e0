; Bash

(function_definition name: (word) @name) @definition.function
(program (variable_assignment name: (variable_name) @name) @definition.variable)
(program (declaration_command (variable_assignment name: (variable_name) @name)) @definition.variable)

(command
  name: (command_name (word) @_src)
  argument: (_) @import.module
  (#match? @_src "^(source|\\.)$")) @import

(command name: (command_name (word) @callee)) @call

(simple_expansion (variable_name) @reference)
(expansion (variable_name) @reference)
