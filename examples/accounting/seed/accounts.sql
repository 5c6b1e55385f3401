CREATE TABLE accounts (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, balance_cents INTEGER NOT NULL);
INSERT INTO accounts VALUES ('C-1001', 'Ada Lovelace', 'ada@example.com', 0);
INSERT INTO accounts VALUES ('C-2002', 'Grace Hopper', 'grace@example.com', -120000);
