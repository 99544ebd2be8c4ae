"""Online episodic algorithms; importing this package registers them."""
