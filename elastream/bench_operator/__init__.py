"""`elastream bench operator`: how one operator process keeps up with many StreamApps."""
