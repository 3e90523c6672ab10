"""Drafters behind one interface (`specdec_lib.core.draft`), one module each.

`registry` declares every drafter in one table (name, usage forms, argument parser and the
`module:function` of its builder) and holds the spec grammar: `registry.parse`, `registry.build`,
`registry.build_drafter` and presets such as `best`. Importing this package imports nothing: a
drafter module is imported only when `registry.build` makes one of its drafters, so checking a
spec loads no torch. Import names from the module that defines them.
"""
