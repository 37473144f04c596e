"""The instructors' tools, beside the students' library: releasing the homework
and the students' versions (:mod:`~attnlab.teaching.release`), collecting the
notebooks an LMS hands out (:mod:`~attnlab.teaching.collect`), and grading them
(:mod:`~attnlab.teaching.grading`), each notebook in a sandbox
(:mod:`~attnlab.teaching.sandbox`), executed so that a crash costs only its cell
(:mod:`~attnlab.teaching.execute`), its checks judged by a grader process of its
own (:mod:`~attnlab.teaching.verdicts`) through a channel of plain data
(:mod:`~attnlab.teaching.channel`), several at a time
(:mod:`~attnlab.teaching.pool`).

The commands keep their names: ``python -m attnlab.homework``, ``python -m
attnlab.grading`` and ``python -m attnlab.collect``.
"""
