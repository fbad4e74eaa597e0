; Swift

(class_declaration declaration_kind: "class" name: (type_identifier) @name (inheritance_specifier inherits_from: (_) @base)*) @definition.class
(class_declaration declaration_kind: "actor" name: (type_identifier) @name (inheritance_specifier inherits_from: (_) @base)*) @definition.class
(class_declaration declaration_kind: "struct" name: (type_identifier) @name (inheritance_specifier inherits_from: (_) @base)*) @definition.struct
(class_declaration declaration_kind: "enum" name: (type_identifier) @name (inheritance_specifier inherits_from: (_) @base)*) @definition.enum
(class_declaration declaration_kind: "extension" name: (user_type (type_identifier) @scope.name)) @scope
(protocol_declaration name: (type_identifier) @name) @definition.protocol
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @declaration.method
(init_declaration "init" @name) @definition.method
(typealias_declaration name: (type_identifier) @name) @definition.type
(class_body (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.field)
(source_file (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.variable)
(enum_entry name: (simple_identifier) @name) @definition.field

(import_declaration (identifier) @import.module) @import

(call_expression . (_) @callee) @call

(inheritance_specifier inherits_from: (_) @reference)
(user_type (type_identifier) @reference)
(value_argument value: (simple_identifier) @reference)
