; PHP

(class_declaration name: (name) @name
  (base_clause)? @bases
  (class_interface_clause)? @bases) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name body: (_)) @definition.method
(method_declaration name: (name) @name !body) @declaration.method
(namespace_definition name: (namespace_name) @name body: (_)) @definition.namespace
(property_declaration (property_element (variable_name (name) @name))) @definition.field
(const_declaration (const_element (name) @name)) @definition.constant

(namespace_use_declaration (namespace_use_clause . [(qualified_name) (name)] @import.module !alias)) @import
(namespace_use_declaration (namespace_use_clause [(qualified_name) (name)] @import.module alias: (name) @import.alias)) @import

(function_call_expression function: (_) @callee) @call
(member_call_expression object: (_) @callee.object name: (_) @callee) @call
(scoped_call_expression scope: (_) @callee.object name: (_) @callee) @call
(object_creation_expression (name) @callee) @call
(object_creation_expression (qualified_name) @callee) @call

(named_type (name) @reference)
(argument (variable_name) @reference)
