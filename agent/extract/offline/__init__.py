"""The offline extractor: answers from a document's own structure, with no model."""
