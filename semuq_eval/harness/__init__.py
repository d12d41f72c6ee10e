"""lm-eval glue: the semuq task class, the filter that runs operators, scoring, labels and the run store."""
