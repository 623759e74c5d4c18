"""The one exception type that turns an input event into a dead letter."""


class InvalidEvent(ValueError):
    """An event that cannot become rows. Its message is the dead-letter reason, so say what and
    where (``field 'hostname': contains '#'``), never just "bad input"."""
