"""Against the published numbers and the authors' code, under the authors' protocols."""
