"""Embedding: the embedders (local models, the OpenAI-compatible client, the hash fallback), what text
of a turn is embedded, and the background worker that fills the vector backlog."""
