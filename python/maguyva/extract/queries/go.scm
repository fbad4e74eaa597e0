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

; References. Every type named is one, wherever it is written (a result type, a struct
; field's slice or map element, a type assertion or type switch case, an embedded type, a
; receiver, a generic argument); a type's own name and the member part of a qualified type
; (`Handler` of `http.Handler`, which would read as this package's `Handler`) are not.
(type_identifier) @reference
(qualified_type) @reference
(qualified_type name: (type_identifier) @reference.not)
(type_spec name: (type_identifier) @reference.not)
(type_alias name: (type_identifier) @reference.not)

; A value named where it is read or written: package variables and constants are used in
; operators, index and slice expressions, range clauses, assignments, composite literals and
; case lists, not only as call arguments. A name being declared (`x := ...`, a parameter,
; `var x`) is no use; a callee is a call, not a reference.
(argument_list (identifier) @reference)
(argument_list (selector_expression) @reference)
(return_statement (expression_list [(identifier) (selector_expression)] @reference))
(binary_expression left: [(identifier) (selector_expression)] @reference)
(binary_expression right: [(identifier) (selector_expression)] @reference)
(unary_expression operand: [(identifier) (selector_expression)] @reference)
(index_expression operand: [(identifier) (selector_expression)] @reference)
(index_expression index: (identifier) @reference)
(slice_expression operand: (identifier) @reference)
(range_clause right: [(identifier) (selector_expression)] @reference)
(assignment_statement left: (expression_list (identifier) @reference (#not-eq? @reference "_")))
(assignment_statement right: (expression_list [(identifier) (selector_expression)] @reference))
(short_var_declaration right: (expression_list [(identifier) (selector_expression)] @reference))
(var_spec value: (expression_list [(identifier) (selector_expression)] @reference))
(const_spec value: (expression_list [(identifier) (selector_expression)] @reference))
(keyed_element value: (literal_element [(identifier) (selector_expression)] @reference))
(literal_value (literal_element [(identifier) (selector_expression)] @reference))
(expression_case value: (expression_list [(identifier) (selector_expression)] @reference))
(if_statement condition: (identifier) @reference)
(send_statement value: (identifier) @reference)
(inc_statement (identifier) @reference)
(dec_statement (identifier) @reference)
