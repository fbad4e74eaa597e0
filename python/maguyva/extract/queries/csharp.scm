; C#

(class_declaration name: (identifier) @name (base_list)? @bases) @definition.class
(struct_declaration name: (identifier) @name (base_list)? @bases) @definition.struct
(record_declaration name: (identifier) @name (base_list)? @bases) @definition.record
(interface_declaration name: (identifier) @name (base_list)? @bases) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(delegate_declaration name: (identifier) @name) @definition.type
(namespace_declaration name: (_) @name) @definition.namespace
(file_scoped_namespace_declaration name: (_) @name) @definition.namespace
(method_declaration name: (identifier) @name body: (_)) @definition.method
(method_declaration name: (identifier) @name !body) @declaration.method
(local_function_statement name: (identifier) @name) @definition.function
(constructor_declaration name: (identifier) @name) @definition.method
(destructor_declaration name: (identifier) @name) @definition.method
(operator_declaration operator: _ @name) @definition.method
(property_declaration name: (identifier) @name) @definition.field
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.field
(event_field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.field
(enum_member_declaration name: (identifier) @name) @definition.field

(using_directive (identifier) @import.alias (qualified_name) @import.module) @import
(using_directive . (qualified_name) @import.module) @import
(using_directive . (identifier) @import.module .) @import

(invocation_expression function: (_) @callee) @call
(object_creation_expression type: (_) @callee) @call

(argument (identifier) @reference)
(argument (member_access_expression) @reference)
(parameter type: (identifier) @reference)
(parameter type: (generic_name) @reference)
(variable_declaration type: (identifier) @reference)
(base_list (_) @reference)
