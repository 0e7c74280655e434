"""profwin-toy: the example backend of docs/plugins.md, written against :mod:`profwin.plugin` only."""
