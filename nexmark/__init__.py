"""Nexmark (persons, auctions and bids of an online auction) for elastream: the generator, the producer that writes it
to Kafka at one of the load generator's rate profiles, and the queries' reference results (nexmark.reference)."""
