def loss(step: int) -> float:
    if step == 3:
        raise ValueError(f"loss is nan at step {step} in half precision")
    return 1.0 / step
