"""flexmg package."""
