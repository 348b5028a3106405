-- The bundled sample database of the sandbox's text2sql backend (after Spider's
-- concert_singer). concert.sqlite next to this file is built from it:
--   go test ./sandbox/text2sql -run TestSampleDatabase -update
PRAGMA page_size = 1024;

CREATE TABLE stadium (
  stadium_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  location TEXT NOT NULL,
  capacity INTEGER NOT NULL,
  opened INTEGER
);

CREATE TABLE singer (
  singer_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  country TEXT NOT NULL,
  genre TEXT NOT NULL,
  age INTEGER NOT NULL
);

CREATE TABLE concert (
  concert_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  theme TEXT NOT NULL,
  stadium_id INTEGER NOT NULL REFERENCES stadium(stadium_id),
  year INTEGER NOT NULL
);

CREATE TABLE singer_in_concert (
  concert_id INTEGER NOT NULL REFERENCES concert(concert_id),
  singer_id INTEGER NOT NULL REFERENCES singer,
  PRIMARY KEY (concert_id, singer_id)
);

INSERT INTO stadium VALUES
  (1, 'Harbour Arena', 'Lisbon', 42000, 1998),
  (2, 'North Field', 'Oslo', 18500, 2004),
  (3, 'Glass Dome', 'Osaka', 55000, 2011),
  (4, 'Riverside Bowl', 'Austin', 23000, 1987),
  (5, 'Old Quarry', 'Leeds', 9000, NULL);

INSERT INTO singer VALUES
  (1, 'Ana Duarte', 'Portugal', 'Fado', 34),
  (2, 'Kari Lunde', 'Norway', 'Pop', 27),
  (3, 'Haruto Mori', 'Japan', 'Rock', 41),
  (4, 'June Castillo', 'United States', 'Country', 38),
  (5, 'Tom Reyes', 'United States', 'Rock', 52),
  (6, 'Mia Holt', 'United Kingdom', 'Pop', 23);

INSERT INTO concert VALUES
  (1, 'Tides', 'Sea songs', 1, 2019),
  (2, 'Midnight Sun', 'Summer', 2, 2021),
  (3, 'Neon Nights', 'City lights', 3, 2022),
  (4, 'Dust Road', 'Roots', 4, 2022),
  (5, 'Echoes', 'Acoustic', 5, 2023),
  (6, 'Homecoming', 'Sea songs', 1, 2023);

INSERT INTO singer_in_concert VALUES
  (1, 1), (2, 2), (2, 6), (3, 3), (3, 5),
  (4, 4), (4, 5), (5, 6), (6, 1), (6, 2);
