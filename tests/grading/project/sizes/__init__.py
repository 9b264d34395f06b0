def natural(n):
    """A size in bytes, in words."""
    if n == 1:
        return "1 Byte"
    return f"{n} Bytes"
