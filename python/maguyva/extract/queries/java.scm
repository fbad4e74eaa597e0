; Java

(class_declaration name: (identifier) @name
  superclass: (_)? @bases
  interfaces: (_)? @bases) @definition.class
(record_declaration name: (identifier) @name) @definition.record
(interface_declaration name: (identifier) @name (extends_interfaces)? @bases) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(annotation_type_declaration name: (identifier) @name) @definition.interface
(annotation_type_element_declaration name: (identifier) @name) @declaration.method
(method_declaration name: (identifier) @name body: (block)) @definition.method
(method_declaration name: (identifier) @name !body) @declaration.method
(constructor_declaration name: (identifier) @name) @definition.method
(compact_constructor_declaration name: (identifier) @name) @definition.method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.field
(enum_constant name: (identifier) @name) @definition.field

(import_declaration (scoped_identifier) @import.module) @import
(import_declaration (scoped_identifier) @import.module (asterisk) @import.wildcard) @import

(method_invocation object: (_)? @callee.object name: (identifier) @callee) @call
(object_creation_expression type: (_) @callee) @call

(type_identifier) @reference
(argument_list (identifier) @reference)
(argument_list (field_access) @reference)
(method_reference) @reference
