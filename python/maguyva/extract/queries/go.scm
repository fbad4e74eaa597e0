; Go

(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @receiver
             (pointer_type (type_identifier) @receiver)
             (generic_type type: (type_identifier) @receiver)
             (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (pointer_type)
  (function_type) (map_type) (slice_type) (array_type) (channel_type) (generic_type)]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(interface_type (method_elem name: (field_identifier) @name) @declaration.method)
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(field_declaration_list (field_declaration name: (field_identifier) @name) @definition.field)

(import_spec name: (_)? @import.alias path: (_) @import.module) @import

(call_expression function: (_) @callee) @call
(composite_literal type: (type_identifier) @reference)
(composite_literal type: (qualified_type) @reference)

(parameter_declaration type: (type_identifier) @reference)
(parameter_declaration type: (qualified_type) @reference)
(parameter_declaration type: (pointer_type (type_identifier) @reference))
(parameter_declaration type: (pointer_type (qualified_type) @reference))
(field_declaration type: (type_identifier) @reference)
(field_declaration type: (qualified_type) @reference)
(field_declaration type: (pointer_type (type_identifier) @reference))
(argument_list (identifier) @reference)
(argument_list (selector_expression) @reference)
(return_statement (expression_list (identifier) @reference))
