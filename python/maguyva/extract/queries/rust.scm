; Rust

(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @declaration.function
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.union
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(field_declaration_list (field_declaration name: (field_identifier) @name) @definition.field)
(enum_variant_list (enum_variant name: (identifier) @name) @definition.field)

; impl blocks qualify their functions (Type.method) without being definitions
(impl_item type: [(type_identifier) @scope.name
                  (generic_type type: (type_identifier) @scope.name)
                  (scoped_type_identifier name: (type_identifier) @scope.name)]) @scope

(use_declaration argument: (_) @import.tree) @import
(extern_crate_declaration name: (identifier) @import.module alias: (identifier)? @import.alias) @import

(call_expression function: (_) @callee) @call
(macro_invocation macro: (_) @callee) @call

(type_identifier) @reference
(arguments (identifier) @reference)
(arguments (field_expression) @reference)
(struct_expression name: (_) @reference)
; a type named in a path before `::` is used there: `Foo::new()`, `ProtocolVersion::TLSv1_3`,
; `hs::Foo::new()` and `crate::ticketer::TicketRotator::new(..)` (the path as written, which
; the graph resolves through `use` and `mod`; a lower-case segment is a module, not a use)
(scoped_identifier path: (identifier) @reference (#match? @reference "^[A-Z]"))
(scoped_identifier path: (scoped_identifier name: (identifier) @_type) @reference
  (#match? @_type "^[A-Z]"))
; a type by its path (`Arc<dyn verify::ClientCertVerifier>`): the path as written, not its
; last segment alone, which the file may not import
(scoped_type_identifier name: (type_identifier) @reference.not) @reference
; an item named by its module path where a value goes (`super::model::ModelFieldsBuilder` in
; a macro's list, `consts::MAX_LEN`): the path as written; `Enum::Variant` counts as `Enum`.
; The extractor keeps the paths whose last module is lower case and whose item is not (two
; `#match?` predicates here cost three times the rest of the query)
(scoped_identifier name: (identifier)) @reference.path
; ... but not in a `use` (an import, or a re-export: an edge of its own, not a use)
(use_declaration argument: (scoped_identifier) @reference.not)
(use_as_clause path: (scoped_identifier) @reference.not)
(use_list (scoped_identifier) @reference.not)
(use_wildcard (scoped_identifier) @reference.not)
