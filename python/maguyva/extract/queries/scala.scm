; Scala

(class_definition name: (identifier) @name extend: (extends_clause)? @bases) @definition.class
(object_definition name: (identifier) @name extend: (extends_clause)? @bases) @definition.object
(trait_definition name: (identifier) @name extend: (extends_clause)? @bases) @definition.trait
(enum_definition name: (identifier) @name) @definition.enum
(function_definition name: (identifier) @name) @definition.function
(function_declaration name: (identifier) @name) @declaration.method
(type_definition name: (type_identifier) @name) @definition.type
(template_body (val_definition pattern: (identifier) @name) @definition.field)
(template_body (var_definition pattern: (identifier) @name) @definition.field)
(compilation_unit (val_definition pattern: (identifier) @name) @definition.variable)

(import_declaration) @import

(call_expression function: (_) @callee) @call
(instance_expression (type_identifier) @callee) @call

(type_identifier) @reference
(arguments (identifier) @reference)
