"""Problems: benchmark problems, their seeding and size constants, input specs, and kbm's substrates for them."""
