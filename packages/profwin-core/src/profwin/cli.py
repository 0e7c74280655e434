"""The profwin command (being written)."""


def main() -> int:
    return 0
