; Kotlin

(class_declaration "interface" name: (identifier) @name) @definition.interface
(class_declaration name: (identifier) @name (enum_class_body)) @definition.enum
(class_declaration name: (identifier) @name (delegation_specifiers)? @bases) @definition.class
(object_declaration name: (identifier) @name) @definition.object
(companion_object name: (identifier)? @name) @definition.object
(function_declaration name: (identifier) @name) @definition.function
(type_alias type: (identifier) @name) @definition.type
(source_file (property_declaration (variable_declaration (identifier) @name)) @definition.variable)
(enum_class_body (enum_entry (identifier) @name) @definition.field)
(class_body (property_declaration (variable_declaration (identifier) @name)) @definition.field)

(import (qualified_identifier) @import.module (identifier)? @import.alias) @import

(call_expression . (_) @callee) @call

(user_type (identifier) @reference)
(value_argument (identifier) @reference)
