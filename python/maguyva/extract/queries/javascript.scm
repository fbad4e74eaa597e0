; JavaScript (also the base of typescript.scm)

(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (identifier) @name (class_heritage (_) @base)?) @definition.class
(class name: (identifier) @name) @definition.class
(method_definition name: [(property_identifier) (private_property_identifier) (computed_property_name)] @name) @definition.method
(field_definition property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.method
(field_definition property: [(property_identifier) (private_property_identifier)] @name) @definition.field
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(variable_declarator name: (identifier) @name value: (class)) @definition.class
(program (lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(string) (number) (object) (array) (call_expression) (new_expression) (template_string)
            (member_expression) (identifier) (binary_expression) (true) (false) (regex)]) @definition.variable))
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(string) (number) (object) (array) (call_expression) (new_expression) (template_string)
            (member_expression) (identifier) (binary_expression) (true) (false) (regex)]) @definition.variable)))
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]) @definition.function
(pair key: (property_identifier) @name value: [(arrow_function) (function_expression)]) @definition.function
; a named function expression handed over or returned (`return function expressInit(req) {..}`,
; `on("end", function onEnd() {..})`) is known by its own name
(return_statement (function_expression name: (identifier) @name) @definition.function)
(arguments (function_expression name: (identifier) @name) @definition.function)

; imports
(import_statement (import_clause (identifier) @import.default) source: (string (string_fragment) @import.module)) @import
(import_statement (import_clause (named_imports (import_specifier name: (_) @import.name alias: (_)? @import.alias)))
  source: (string (string_fragment) @import.module)) @import
(import_statement (import_clause (namespace_import (identifier) @import.alias)) source: (string (string_fragment) @import.module)) @import
(import_statement . source: (string (string_fragment) @import.module)) @import
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression function: (identifier) @_req arguments: (arguments . (string (string_fragment) @import.module)))
  (#eq? @_req "require")) @import
(export_statement source: (string (string_fragment) @import.module)) @import

; calls
(call_expression function: (_) @callee) @call
(new_expression constructor: (_) @callee) @call

; references
(arguments (identifier) @reference)
(arguments (member_expression) @reference)
(return_statement (identifier) @reference)
(shorthand_property_identifier) @reference
(pair value: (identifier) @reference)
(variable_declarator value: (identifier) @reference)
