module elastream.local/pause

go 1.22
