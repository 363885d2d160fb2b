"""llama.cpp's `llama-server`: its ggml types and file types, its argument table and its
start command, as data (nothing here runs or imports llama.cpp)."""
