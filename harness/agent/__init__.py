"""The agent: its loop (`loop`), its tools (`tools`) and what it leaves (`trajectory`, `atif`)."""
