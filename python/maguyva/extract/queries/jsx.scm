; JSX elements (appended to the JavaScript and TSX queries)
(jsx_opening_element name: (_) @reference)
(jsx_self_closing_element name: (_) @reference)
