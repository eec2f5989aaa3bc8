"""Why a default is what it is: the records of how each one was chosen."""
