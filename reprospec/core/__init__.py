"""The foundation every stage uses: frozen values (inputs, results, sections, run options), units,
the vocabulary (words), redaction, expressions, rates and bounds.

Nothing here imports another stage, so any module may import from here.
"""
