def loss(step: int) -> float:
    return 1.0 / step
