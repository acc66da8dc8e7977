def count_tokens(text: str) -> int:
    # The bug: a word with a digit in it is parsed as a number.
    return sum(int(word) if word[:1].isdigit() else 1 for word in text.split())
