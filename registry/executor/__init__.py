"""Running a recipe: the launch plan per platform, the engine process, the benchmark
client, the run directory it writes."""
