"""Reports: what the store says, for people — terminal tables, figures, Markdown tables, standard exports."""
