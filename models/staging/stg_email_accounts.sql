{{ config(materialized='ephemeral') }}

-- the current version of each mailbox the API still returns (inlined where used: a view may not
-- read another model, see macros/atomic_build.sql)
with history as (
    select * from {{ ref('stg_email_account_history') }}
),

current_versions as (
    select * from history
    where is_current
)

select * from current_versions
