"""attnlab: the code of the course "Attention mechanisms, from soft lookup to pointer
networks".

Every chapter notebook imports its models, data, training loop, plots and exercise
checks from here.
"""

__version__ = "0.9.0"
