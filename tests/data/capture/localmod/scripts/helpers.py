def fmt(value: float) -> str:
    return f"{value:.3f}"
