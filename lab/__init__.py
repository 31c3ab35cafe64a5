"""The fitting and quality studies: what makes the shipped weights files and the quality figures
(README.md beside this file says which command makes which). The bot never imports them, nor
they the bot: what they fit and measure lives in ``conversation``; tests run them as commands;
``bench`` may reuse their baselines and data paths."""
