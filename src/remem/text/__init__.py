"""Text shapes: the one CJK range, segmentation for the word index (CJK bigrams + jieba), entity extraction,
Markdown code fences."""
