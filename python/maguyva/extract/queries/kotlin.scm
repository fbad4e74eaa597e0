; Kotlin

(class_declaration "interface" name: (identifier) @name) @definition.interface
(class_declaration name: (identifier) @name (enum_class_body)) @definition.enum
(class_declaration name: (identifier) @name (delegation_specifiers)? @bases) @definition.class
(object_declaration name: (identifier) @name) @definition.object
; an unnamed companion object is no definition: its members belong to the class (`Foo.make`)
(companion_object name: (identifier) @name) @definition.object
(function_declaration name: (identifier) @name) @definition.function
; tree-sitter-kotlin reads annotations on their own lines followed by a modifier
; (`@Target(...)\nannotation class Name`, `@InvokeArg\nsealed class Name { ... }`) as an
; expression: `annotation class Name` / `sealed class Name { ... }` (an infix call with a lambda)
(infix_expression . (identifier) . (identifier) @_kw . (identifier) @name
  (#eq? @_kw "class")) @definition.class
(infix_expression . (identifier) . (identifier) @_kw . (call_expression . (identifier) @name (annotated_lambda))
  (#eq? @_kw "class")) @definition.class
(type_alias type: (identifier) @name) @definition.type
(source_file (property_declaration (variable_declaration (identifier) @name)) @definition.variable)
(enum_class_body (enum_entry (identifier) @name) @definition.field)
(class_body (property_declaration (variable_declaration (identifier) @name)) @definition.field)

(import (qualified_identifier) @import.module (identifier)? @import.alias) @import

(call_expression . (_) @callee) @call

(user_type (identifier) @reference)
(value_argument (identifier) @reference)
