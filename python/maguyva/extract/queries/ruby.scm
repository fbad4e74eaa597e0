; Ruby

(class name: [(constant) (scope_resolution)] @name superclass: (superclass (_) @base)?) @definition.class
(module name: [(constant) (scope_resolution)] @name) @definition.module
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
(program (assignment left: (constant) @name) @definition.constant)
(body_statement (assignment left: (constant) @name) @definition.constant)

(call
  method: (identifier) @_req
  arguments: (argument_list . (string (string_content) @import.module))
  (#match? @_req "^(require|require_relative|load)$")) @import

(call receiver: (_)? @callee.object method: (_) @callee) @call

(argument_list (identifier) @reference)
(argument_list (constant) @reference)
(argument_list (scope_resolution) @reference)
(superclass (_) @reference)
