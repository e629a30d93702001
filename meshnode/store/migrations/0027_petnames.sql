-- Petnames (issue 35): the names the person gives agents on this node alone, never sent anywhere.
-- A petname wins over the name an agent announces; one petname per agent, unique here whatever
-- its case (store/names.py shows and resolves them; domain/names.py says what a petname may be).
CREATE TABLE petnames (
    did        TEXT PRIMARY KEY,
    petname    TEXT NOT NULL UNIQUE COLLATE NOCASE,
    set_at_ms  INTEGER NOT NULL
);
