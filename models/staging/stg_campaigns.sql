{{ config(materialized='table') }}

-- the current version of each campaign the API still returns. A table (a view may not read another model, see
-- macros/atomic_build.sql), kept out of the BI file with the other staging models (models/publish.py)
with history as (
    select * from {{ ref('stg_campaign_history') }}
),

current_versions as (
    select * from history
    where is_current
)

select * from current_versions
