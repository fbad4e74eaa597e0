; TypeScript and TSX: the JavaScript patterns (kept in sync by hand) plus types.

(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(function_signature name: (identifier) @name) @declaration.function
(class_declaration name: (type_identifier) @name (class_heritage)? @bases) @definition.class
(abstract_class_declaration name: (type_identifier) @name (class_heritage)? @bases) @definition.class
(class name: (type_identifier) @name) @definition.class
(method_definition name: [(property_identifier) (private_property_identifier) (computed_property_name)] @name) @definition.method
(abstract_method_signature name: (property_identifier) @name) @declaration.method
(method_signature name: (property_identifier) @name) @declaration.method
; a property typed as a function (`onDidChange: (e: E) => void`) is a method signature; the
; field pattern below matches it too, and the extractor keeps "method"
(property_signature name: (property_identifier) @name
  type: (type_annotation [(function_type) (parenthesized_type (function_type))])) @declaration.method
; construct and call signatures of an interface or object type: `new (...): T` (named `new`,
; as ctags does) and `(...): T` (named `call`)
(construct_signature "new" @name) @declaration.method
(call_signature . (formal_parameters) @name) @declaration.method
; a class member written as an arrow function or function expression is a method (its own
; chunk and span); the field pattern below matches it too, and the extractor keeps "method"
(public_field_definition name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.method
(public_field_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.field
(interface_body (property_signature name: (property_identifier) @name) @definition.field)
(interface_declaration name: (type_identifier) @name (extends_type_clause (_) @base)?) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.namespace
(module name: [(identifier) (nested_identifier)] @name) @definition.module
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(variable_declarator name: (identifier) @name value: (class)) @definition.class
(program (lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(string) (number) (object) (array) (call_expression) (new_expression) (template_string)
            (member_expression) (identifier) (binary_expression) (true) (false) (regex) (as_expression)]) @definition.variable))
(program (export_statement (lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(string) (number) (object) (array) (call_expression) (new_expression) (template_string)
            (member_expression) (identifier) (binary_expression) (true) (false) (regex) (as_expression)]) @definition.variable)))
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]) @definition.function
(pair key: (property_identifier) @name value: [(arrow_function) (function_expression)]) @definition.function
; a named function expression handed over or returned (`return function expressInit(req) {..}`,
; `on("end", function onEnd() {..})`) is known by its own name
(return_statement (function_expression name: (identifier) @name) @definition.function)
(arguments (function_expression name: (identifier) @name) @definition.function)

; imports
(import_statement (import_clause (identifier) @import.default) source: (string (string_fragment) @import.module)) @import
(import_statement (import_clause (named_imports (import_specifier name: (_) @import.name alias: (_)? @import.alias)))
  source: (string (string_fragment) @import.module)) @import
(import_statement (import_clause (namespace_import (identifier) @import.alias)) source: (string (string_fragment) @import.module)) @import
(import_statement . source: (string (string_fragment) @import.module)) @import
(import_statement (import_require_clause (identifier) @import.alias source: (string (string_fragment) @import.module))) @import
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression function: (identifier) @_req arguments: (arguments . (string (string_fragment) @import.module)))
  (#eq? @_req "require")) @import
(export_statement source: (string (string_fragment) @import.module)) @import

; calls
(call_expression function: (_) @callee) @call
(new_expression constructor: (_) @callee) @call

; references
; every type named (annotations, unions, `x is T`, `as T`, `T[]`, `extends`, type aliases'
; values), and the namespace or enum of a qualified type (`ActionKind` of `ActionKind.Rename`);
; not the names being defined, type parameters or the member part of a qualified type
(type_identifier) @reference
(nested_type_identifier module: (identifier) @reference)
; ... and the qualified type whole: `CommentUtils.CommentDiagnostic` after `import * as
; CommentUtils` is that interface (the graph walks the namespace import)
(nested_type_identifier) @reference
(nested_type_identifier name: (type_identifier) @reference.not)
(interface_declaration name: (type_identifier) @reference.not)
(class_declaration name: (type_identifier) @reference.not)
(abstract_class_declaration name: (type_identifier) @reference.not)
(class name: (type_identifier) @reference.not)
(type_alias_declaration name: (type_identifier) @reference.not)
(type_parameter name: (type_identifier) @reference.not)
(extends_clause value: (_) @reference)
(arguments (identifier) @reference)
(arguments (member_expression) @reference)
(return_statement (identifier) @reference)
(shorthand_property_identifier) @reference
(pair value: (identifier) @reference)
