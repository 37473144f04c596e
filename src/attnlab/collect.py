"""``python -m attnlab.collect``: placing the notebooks an LMS hands out, by
:mod:`attnlab.teaching.collect` (the same as ``python -m attnlab.grading
collect``)."""

from attnlab.teaching.collect import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
