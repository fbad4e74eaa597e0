; C

(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
(translation_unit (declaration declarator: (function_declarator declarator: (identifier) @name)) @declaration.function)
(translation_unit (declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @declaration.function)
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.union
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.enum
(type_definition declarator: (type_identifier) @name) @definition.type
(preproc_def name: (identifier) @name) @definition.macro
(preproc_function_def name: (identifier) @name) @definition.macro
(enumerator name: (identifier) @name) @definition.constant
(field_declaration_list (field_declaration declarator: (field_identifier) @name) @definition.field)
(translation_unit (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.variable)

(preproc_include path: (_) @import.module) @import

(call_expression function: (_) @callee) @call

(argument_list (identifier) @reference)
(parameter_declaration type: (type_identifier) @reference)
(declaration type: (type_identifier) @reference)
(field_declaration type: (type_identifier) @reference)
(struct_specifier name: (type_identifier) @reference !body)
