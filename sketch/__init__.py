"""Pure similarity-sketch algorithms: numpy + mmh3, no I/O, no asyncio, no global state."""
