-- Fills a migrated, catalog-seeded GPUnex store with a simulated marketplace for bench/market.sh.
-- One file for both drivers (sqlite3 and psql run it as is); bench/market.sh replaces the
-- tokens: @NOW@ (epoch ms), @DAY@ / @HOUR@ (milliseconds, cast to BIGINT: PostgreSQL's INTEGER
-- products would overflow), @PROVIDERS@, @MACHINES@ (GPU counts cycle through ten slots of 50
-- GPUs, so 5 per machine), @MAINT_START@ / @MAINT_END@ (a one-off maintenance window around now).
--
-- Deterministic: every choice is a multiplicative hash of a row number, (i * A) % 1000003, with
-- a different A per choice, so both stores get the same market and the figures compare (scores
-- are ROUNDed: SQLite multiplies doubles, PostgreSQL exact numerics, and their last bits differ).
-- The mix, so that the offer filters do work:
--   providers: 25% Enterprise, commitment 3/6/12 months, 10 locations in 7 regions, fleet sizes
--              skewed (low-numbered providers own up to ~50 machines, most a handful);
--   machines:  75% of a provider's primary model, the rest another; 8% offline; 45% have a
--              schedule (weekly windows in 5 time zones, some out of window now; maintenance
--              windows; 2% in a one-off maintenance now);
--   GPUs:      1/2/4/5/8 per machine; 0.5% no longer present, 1% never benchmarked (no listing
--              row), 4% delisted by a failed benchmark;
--   prices:    one per (provider, model it has), 0.7-1.3x the catalog reference price, history
--              of two rates for a third; 4% of (provider, model) pairs unpriced.

CREATE TABLE bench_n (i BIGINT PRIMARY KEY);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < @MACHINES@)
INSERT INTO bench_n (i) SELECT i FROM n;

-- cum: cumulative weight (percent) of the models up to this one; perf: a healthy card's score.
CREATE TABLE bench_models (id TEXT PRIMARY KEY, cum BIGINT NOT NULL, perf NUMERIC NOT NULL);
INSERT INTO bench_models (id, cum, perf) VALUES
  ('RTX-4090', 22, 30.0), ('A100-SXM-80GB', 34, 40.0), ('A100-PCIE-80GB', 40, 37.0),
  ('A100-PCIE-40GB', 48, 33.0), ('H100-SXM', 62, 100.0), ('H100-PCIE', 70, 72.0), ('H200', 75, 112.0),
  ('L40S', 85, 40.0), ('L4', 93, 13.0), ('RTX-A6000', 100, 24.0);

CREATE TABLE bench_places (k BIGINT PRIMARY KEY, city TEXT NOT NULL, country TEXT NOT NULL, region TEXT NOT NULL);
INSERT INTO bench_places (k, city, country, region) VALUES
  (0, 'Ashburn', 'US', 'us-east'), (1, 'New York', 'US', 'us-east'), (2, 'San Jose', 'US', 'us-west'),
  (3, 'Frankfurt', 'DE', 'eu-central'), (4, 'Warsaw', 'PL', 'eu-central'), (5, 'Amsterdam', 'NL', 'eu-west'),
  (6, 'London', 'GB', 'eu-west'), (7, 'Tokyo', 'JP', 'asia-east'), (8, 'Singapore', 'SG', 'asia-southeast'),
  (9, 'Sao Paulo', 'BR', 'sa-east');

-- Stored schedules in the server's canonical form (core::schedule_to_json(...).dump()).
CREATE TABLE bench_schedules (k BIGINT PRIMARY KEY, upto BIGINT NOT NULL, timezone TEXT NOT NULL,
                              always_on BIGINT NOT NULL, spec TEXT NOT NULL);
INSERT INTO bench_schedules (k, upto, timezone, always_on, spec) VALUES
  (1, 70, 'UTC', 1, '{"always":true,"maintenance":[{"category":"power","end":"04:00","recurrence":{"nth":1,"weekday":"sun"},"start":"02:00"}],"timezone":"UTC","windows":[]}'),
  (2, 78, 'Europe/Berlin', 0, '{"always":false,"maintenance":[],"timezone":"Europe/Berlin","windows":[{"days":["mon","tue","wed","thu","fri"],"end":"08:00","start":"19:00"},{"days":["sun","sat"],"end":"24:00","start":"09:00"}]}'),
  (3, 84, 'America/New_York', 0, '{"always":false,"maintenance":[],"timezone":"America/New_York","windows":[{"days":["sun","mon","tue","wed","thu","fri","sat"],"end":"07:00","start":"21:00"}]}'),
  (4, 88, 'Asia/Tokyo', 0, '{"always":false,"maintenance":[{"category":"software","end":"06:00","recurrence":{"days":["wed"]},"start":"05:00"}],"timezone":"Asia/Tokyo","windows":[{"days":["mon","tue","wed","thu","fri"],"end":"18:00","start":"09:00"}]}'),
  (5, 92, 'UTC', 0, '{"always":false,"maintenance":[],"timezone":"UTC","windows":[{"days":["sun","mon","tue","wed","thu","fri","sat"],"end":"12:00","start":"00:00"}]}'),
  (6, 96, 'UTC', 0, '{"always":false,"maintenance":[],"timezone":"UTC","windows":[{"days":["sun","mon","tue","wed","thu","fri","sat"],"end":"24:00","start":"12:00"}]}'),
  (7, 98, 'Australia/Sydney', 0, '{"always":false,"maintenance":[],"timezone":"Australia/Sydney","windows":[{"days":["sun","sat"],"end":"24:00","start":"00:00"}]}'),
  (8, 100, 'UTC', 1, '{"always":true,"maintenance":[{"category":"gpu","end":"@MAINT_END@","note":"replacing a fan","start":"@MAINT_START@"}],"timezone":"UTC","windows":[]}');

CREATE TABLE bench_providers (p BIGINT PRIMARY KEY, tier TEXT NOT NULL, commitment BIGINT NOT NULL,
                              place BIGINT NOT NULL, model TEXT NOT NULL);
INSERT INTO bench_providers (p, tier, commitment, place, model)
SELECT i,
       CASE WHEN (i * 2654435761) % 1000003 % 100 < 25 THEN 'enterprise' ELSE 'community' END,
       CASE (i * 2246822519) % 1000003 % 3 WHEN 0 THEN 3 WHEN 1 THEN 6 ELSE 12 END,
       (i * 3266489917) % 1000003 % 10,
       (SELECT id FROM bench_models WHERE cum > (i * 668265263) % 1000003 % 100 ORDER BY cum LIMIT 1)
FROM bench_n WHERE i <= @PROVIDERS@;

-- Provider of machine i: the product of two uniform draws, so low provider numbers own big fleets.
CREATE TABLE bench_machines (j BIGINT PRIMARY KEY, p BIGINT NOT NULL, model TEXT NOT NULL, gpus BIGINT NOT NULL,
                             online BIGINT NOT NULL, sched BIGINT NOT NULL);
INSERT INTO bench_machines (j, p, model, gpus, online, sched)
SELECT m.j, m.p,
       CASE WHEN (m.j * 1103515245) % 1000003 % 100 < 75 THEN pr.model
            ELSE (SELECT id FROM bench_models WHERE cum > (m.j * 22695477) % 1000003 % 100 ORDER BY cum LIMIT 1) END,
       CASE m.j % 10 WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 2 THEN 4 WHEN 3 THEN 8 WHEN 4 THEN 8 WHEN 5 THEN 4
                     WHEN 6 THEN 8 WHEN 7 THEN 2 WHEN 8 THEN 8 ELSE 5 END,
       CASE WHEN (m.j * 69069) % 1000003 % 100 < 8 THEN 0 ELSE 1 END,
       COALESCE((SELECT k FROM bench_schedules WHERE (m.j * 1664525) % 1000003 % 100 >= 55
                  AND upto > (m.j * 1664525) % 1000003 % 100 ORDER BY upto LIMIT 1), 0)
FROM (SELECT i AS j,
             1 + ((i * 2654435761) % 1000003 % @PROVIDERS@) * ((i * 374761393) % 1000003 % @PROVIDERS@) / @PROVIDERS@ AS p
      FROM bench_n WHERE i <= @MACHINES@) m
JOIN bench_providers pr ON pr.p = m.p;

-- Accounts, approved applications, providers and their API keys.
INSERT INTO users (id, email, full_name, password_hash, created_at)
SELECT 'usr_bench' || p, 'provider' || p || '@bench.example', 'Bench Provider ' || p, 'bench: no login',
       @NOW@ - 120 * @DAY@
FROM bench_providers;
INSERT INTO user_roles (user_id, role, granted_at)
SELECT 'usr_bench' || p, 'provider', @NOW@ - 100 * @DAY@ FROM bench_providers;
INSERT INTO applications (id, user_id, status, form, created_at, updated_at, submitted_at, decided_at, decided_by, tier)
SELECT 'app_bench' || pr.p, 'usr_bench' || pr.p, 'approved',
       '{"commitment_months":' || pr.commitment || ',"company":' ||
         CASE WHEN pr.tier = 'enterprise' THEN '"Bench Compute ' || pr.p || ' Ltd"' ELSE 'null' END ||
         ',"email":"provider' || pr.p || '@bench.example","full_name":"Bench Provider ' || pr.p ||
         '","gpus":[{"availability":"24/7","count":8,"download_gbps":' ||
         CASE WHEN pr.tier = 'enterprise' THEN '10' ELSE '1' END || ',"location":{"city":"' || pl.city ||
         '","country":"' || pl.country || '","region":"' || pl.region || '"},"model":"' || pr.model ||
         '","system_ram_gb":512,"upload_gbps":' || CASE WHEN pr.tier = 'enterprise' THEN '10' ELSE '1' END ||
         '}],"maintenance_notes":"","ups":' || CASE WHEN pr.tier = 'enterprise' THEN 'true' ELSE 'false' END || '}',
       @NOW@ - 110 * @DAY@, @NOW@ - 100 * @DAY@, @NOW@ - 108 * @DAY@, @NOW@ - 100 * @DAY@,
       'usr_bench_reviewer', pr.tier
FROM bench_providers pr JOIN bench_places pl ON pl.k = pr.place;
INSERT INTO application_history (application_id, seq, at, by_user, from_status, to_status, note)
SELECT 'app_bench' || p, 1, @NOW@ - 108 * @DAY@, 'usr_bench' || p, 'draft', 'submitted', '' FROM bench_providers;
INSERT INTO application_history (application_id, seq, at, by_user, from_status, to_status, note)
SELECT 'app_bench' || p, 2, @NOW@ - 100 * @DAY@, 'usr_bench_reviewer', 'submitted', 'approved', 'bench'
FROM bench_providers;
INSERT INTO providers (id, user_id, application_id, tier, created_at)
SELECT 'prv_bench' || p, 'usr_bench' || p, 'app_bench' || p, tier, @NOW@ - 100 * @DAY@ FROM bench_providers;
INSERT INTO api_keys (id, provider_id, key_hash, prefix, created_at, last_used_at)
SELECT 'key_bench' || p, 'prv_bench' || p, 'bench-key-hash-' || p, 'gpx_bench', @NOW@ - 100 * @DAY@, @NOW@
FROM bench_providers;
INSERT INTO provider_market_profiles (provider_id, city, country, region, commitment_months, updated_at)
SELECT 'prv_bench' || pr.p, pl.city, pl.country, pl.region, pr.commitment, @NOW@ - 60 * @DAY@
FROM bench_providers pr JOIN bench_places pl ON pl.k = pr.place;

-- Machines (online ones seen just now) and their GPUs.
INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, protocol_version, status,
                      driver_version, cuda_version, created_at, registered_at, last_seen_at, last_seq)
SELECT 'mch_bench' || j, 'prv_bench' || p, 'bench-fp-' || j, 'gpu-host-' || j,
       '{"cpu_model":"AMD EPYC 7543","cpu_cores":64,"ram_mib":524288,"disk_gib":3840,"os":"Ubuntu 22.04","hostname":"gpu-host-' || j || '"}',
       0, '0.1.0', 1, CASE WHEN online = 1 THEN 'online' ELSE 'offline' END, '550.54.15', '12.4',
       @NOW@ - 90 * @DAY@, @NOW@ - 90 * @DAY@, CASE WHEN online = 1 THEN @NOW@ ELSE @NOW@ - @DAY@ END, 1000
FROM bench_machines;
INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, first_seen_at, updated_at)
SELECT 'mch_bench' || m.j, 'GPU-bench-' || m.j || '-' || (k.i - 1), k.i - 1, gm.name, m.model,
       CAST(gm.vram_gib * 1024 AS BIGINT), '{"driver_version":"550.54.15","cuda_version":"12.4"}',
       CASE WHEN ((m.j * 8 + k.i) * 2246822519) % 1000003 % 1000 < 5 THEN 0 ELSE 1 END,
       @NOW@ - 90 * @DAY@, @NOW@ - 90 * @DAY@
FROM bench_machines m JOIN bench_n k ON k.i <= m.gpus JOIN gpu_models gm ON gm.id = m.model;

-- One completed benchmark run per machine (so the benchmark scheduler has nothing due), and the
-- listing state it left: perf score within +-10% of the model's, 4% delisted, 1% never run.
INSERT INTO benchmark_runs (id, machine_id, reason, status, requested_at, delivered_at, completed_at, simulated)
SELECT 'bench_run_' || j, 'mch_bench' || j, 'first_registration', 'completed', @NOW@ - 3 * @DAY@,
       @NOW@ - 3 * @DAY@ + 15000, @NOW@ - 3 * @DAY@ + 900000, 0
FROM bench_machines;
INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, quality_ratio, delist_reason, recommendation,
                         last_run_id, updated_at)
SELECT 'mch_bench' || g.j, 'GPU-bench-' || g.j || '-' || (g.k - 1),
       CASE WHEN g.h2 < 4 THEN 0 ELSE 1 END,
       ROUND(bm.perf * CASE WHEN g.h2 < 4 THEN 0.7 ELSE 0.9 + g.h3 / 1000.0 END, 3),
       ROUND(CASE WHEN g.h2 < 4 THEN 0.7 ELSE 0.9 + g.h3 / 2000.0 END, 4),
       CASE WHEN g.h2 < 4 THEN 'FP16 tensor TFLOP/s: measured 70% of the model''s expected figure' END,
       CASE WHEN g.h2 < 4 THEN 'Check cooling and power limits, then re-run the benchmarks.' END,
       'bench_run_' || g.j, @NOW@ - 3 * @DAY@ + 900000
FROM (SELECT m.j, k.i AS k, m.model, ((m.j * 8 + k.i) * 3266489917) % 1000003 % 1000 AS h1,
             ((m.j * 8 + k.i) * 668265263) % 1000003 % 100 AS h2, ((m.j * 8 + k.i) * 374761393) % 1000003 % 200 AS h3
      FROM bench_machines m JOIN bench_n k ON k.i <= m.gpus) g
JOIN bench_models bm ON bm.id = g.model
WHERE g.h1 >= 10;

-- Prices: every (provider, model) the provider has machines of, except 4%; a third changed once.
CREATE TABLE bench_prices (p BIGINT NOT NULL, model TEXT NOT NULL, h BIGINT NOT NULL, micro BIGINT NOT NULL,
                           PRIMARY KEY (p, model));
INSERT INTO bench_prices (p, model, h, micro)
SELECT x.p, x.model, x.h, (rp.usdc_micro * (700 + x.h % 600) / 1000) / 10000 * 10000
FROM (SELECT DISTINCT m.p, m.model, ((m.p * 16 + bm.cum) * 1103515245) % 1000003 AS h
      FROM bench_machines m JOIN bench_models bm ON bm.id = m.model) x
JOIN gpu_reference_prices rp ON rp.model = x.model
WHERE x.h % 100 >= 4;
INSERT INTO provider_prices (provider_id, model, seq, usdc_micro, region, started_at, set_by)
SELECT 'prv_bench' || bp.p, bp.model, 1, bp.micro + CASE WHEN bp.h % 3 = 0 THEN 100000 ELSE 0 END, pl.region,
       @NOW@ - 60 * @DAY@, 'usr_bench' || bp.p
FROM bench_prices bp JOIN bench_providers pr ON pr.p = bp.p JOIN bench_places pl ON pl.k = pr.place;
INSERT INTO provider_prices (provider_id, model, seq, usdc_micro, region, started_at, set_by)
SELECT 'prv_bench' || bp.p, bp.model, 2, bp.micro, pl.region, @NOW@ - 7 * @DAY@, 'usr_bench' || bp.p
FROM bench_prices bp JOIN bench_providers pr ON pr.p = bp.p JOIN bench_places pl ON pl.k = pr.place
WHERE bp.h % 3 = 0;
INSERT INTO provider_current_prices (provider_id, model, usdc_micro, region, seq, started_at)
SELECT 'prv_bench' || bp.p, bp.model, bp.micro, pl.region, CASE WHEN bp.h % 3 = 0 THEN 2 ELSE 1 END,
       CASE WHEN bp.h % 3 = 0 THEN @NOW@ - 7 * @DAY@ ELSE @NOW@ - 60 * @DAY@ END
FROM bench_prices bp JOIN bench_providers pr ON pr.p = bp.p JOIN bench_places pl ON pl.k = pr.place;

-- Schedules and the maintenance windows they declare.
INSERT INTO machine_schedules (machine_id, provider_id, timezone, always_on, spec, updated_at)
SELECT 'mch_bench' || m.j, 'prv_bench' || m.p, s.timezone, s.always_on, s.spec, @NOW@ - 30 * @DAY@
FROM bench_machines m JOIN bench_schedules s ON s.k = m.sched;
INSERT INTO maintenance_windows (machine_id, idx, category, kind, starts_at, ends_at, recurrence, start_local,
                                 end_local, note, declared_at)
SELECT 'mch_bench' || j, 0, 'power', 'monthly', NULL, NULL, '{"nth":1,"weekday":"sun"}', '02:00', '04:00', '',
       @NOW@ - 30 * @DAY@
FROM bench_machines WHERE sched = 1;
INSERT INTO maintenance_windows (machine_id, idx, category, kind, starts_at, ends_at, recurrence, start_local,
                                 end_local, note, declared_at)
SELECT 'mch_bench' || j, 0, 'software', 'weekly', NULL, NULL, '{"days":["wed"]}', '05:00', '06:00', '',
       @NOW@ - 30 * @DAY@
FROM bench_machines WHERE sched = 4;
INSERT INTO maintenance_windows (machine_id, idx, category, kind, starts_at, ends_at, recurrence, start_local,
                                 end_local, note, declared_at)
SELECT 'mch_bench' || j, 0, 'gpu', 'one_off', @NOW@ - 2 * @HOUR@, @NOW@ + 22 * @HOUR@, NULL, NULL, NULL,
       'replacing a fan', @NOW@ - 3 * @DAY@
FROM bench_machines WHERE sched = 8;

DROP TABLE bench_prices;
DROP TABLE bench_machines;
DROP TABLE bench_providers;
DROP TABLE bench_schedules;
DROP TABLE bench_places;
DROP TABLE bench_models;
DROP TABLE bench_n;
