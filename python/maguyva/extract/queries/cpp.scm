; C++ (C patterns plus classes, namespaces, qualified definitions)

(function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier) (destructor_name) (operator_name)] @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))) @definition.function
([(translation_unit) (declaration_list)] (declaration declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name)) @declaration.function)
(field_declaration declarator: (function_declarator declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @declaration.method
(class_specifier name: [(type_identifier) (qualified_identifier)] @name (base_class_clause)? @bases body: (field_declaration_list)) @definition.class
(struct_specifier name: [(type_identifier) (qualified_identifier)] @name (base_class_clause)? @bases body: (field_declaration_list)) @definition.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.union
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.enum
(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.namespace
(type_definition declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type
(concept_definition name: (identifier) @name) @definition.type
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(field_declaration_list (field_declaration declarator: (field_identifier) @name) @definition.field)

(preproc_include path: (_) @import.module) @import
(using_declaration (qualified_identifier) @import.module) @import

(call_expression function: (_) @callee) @call
(new_expression type: (_) @callee) @call

(argument_list (identifier) @reference)
(type_identifier) @reference
