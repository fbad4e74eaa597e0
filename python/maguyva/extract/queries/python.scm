; Python. Capture names: see docs/structural.md ("Query files").

; ---- definitions
(decorated_definition
  definition: (class_definition
    name: (identifier) @name
    superclasses: (argument_list)? @bases)) @definition.class
(class_definition
  name: (identifier) @name
  superclasses: (argument_list)? @bases) @definition.class
(decorated_definition
  definition: (function_definition name: (identifier) @name)) @definition.function
(function_definition name: (identifier) @name) @definition.function

; module-level and class-level assignments
(module (expression_statement (assignment left: (identifier) @name) @definition.variable))
(class_definition
  body: (block (expression_statement (assignment left: (identifier) @name) @definition.field)))

; ---- imports
(import_statement name: (dotted_name) @import.module) @import
(import_statement
  name: (aliased_import name: (dotted_name) @import.module alias: (identifier) @import.alias)) @import
(import_from_statement module_name: (_) @import.module name: (dotted_name) @import.name) @import
(import_from_statement
  module_name: (_) @import.module
  name: (aliased_import name: (dotted_name) @import.name alias: (identifier) @import.alias)) @import
(import_from_statement module_name: (_) @import.module (wildcard_import) @import.wildcard) @import

; ---- calls
(call function: (_) @callee) @call

; ---- references (names used but not called or defined)
(type (identifier) @reference)
(type (attribute) @reference)
(generic_type (identifier) @reference)
(argument_list (identifier) @reference)
(argument_list (attribute) @reference)
(keyword_argument value: (identifier) @reference)
(decorator (identifier) @reference)
(decorator (attribute) @reference)
(return_statement (identifier) @reference)
(assignment right: (identifier) @reference)
(assignment right: (attribute) @reference)
(raise_statement (identifier) @reference)
(except_clause (identifier) @reference)
(except_clause (attribute) @reference)
; every other attribute read (`if p.daemon:`, `return self.closed`, `x == feat.fid`,
; `f(k=models.SET_NULL)`, `a.b().c`): the extractor keeps the outermost attribute of a chain and
; drops the ones captured as @reference.not (a chain's inner part, an assignment target)
(attribute) @reference
(attribute object: (attribute) @reference.not)
(assignment left: (attribute) @reference.not)
(assignment left: (pattern_list (attribute) @reference.not))
(assignment left: (tuple_pattern (attribute) @reference.not))
(augmented_assignment left: (attribute) @reference.not)
(for_statement left: (attribute) @reference.not)
(delete_statement (attribute) @reference.not)
; `func.__doc__ = ...`, `NamedTuple.__mro_entries__ = ...`: setting an attribute reads its object
(assignment left: (attribute object: (identifier) @reference))

; `name = lambda ...` defines a function (ctags agrees)
(assignment left: (identifier) @name right: (lambda)) @definition.function
