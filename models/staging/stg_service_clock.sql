{{ config(materialized='table') }}

-- One row: the service's clock "now" (as_of_at), which "the last 30 days" and the launch cohorts'
-- maturity are measured on. It is the latest of the newest `observed_at` the sync recorded (the
-- service's HTTP Date when it read an account) and the newest service timestamp in the data (sends,
-- opens, clicks, replies, bounces, webhook events). Never the wall clock: the sandbox's simulated time
-- differs from it, and in production the two agree. A table: one scan of the data per build, read by
-- every mart that needs "now" (macros/atomic_build.sql: a view may not read another model).
with workspaces as (
    select max(observed_at) as observed_at from {{ ref('stg_workspaces') }}
),

recipients as (
    select
        max(last_sent_at) as last_sent_at,
        max(opened_at) as opened_at,
        max(clicked_at) as clicked_at,
        max(replied_at) as replied_at,
        max(bounced_at) as bounced_at
    from {{ ref('stg_campaign_recipients') }}
),

replies as (
    select max(received_at) as received_at from {{ ref('stg_replies') }}
),

events as (
    select max(created_at) as created_at from {{ ref('stg_events') }}
),

clock as (
    select
        greatest(
            workspaces.observed_at,
            recipients.last_sent_at, recipients.opened_at, recipients.clicked_at, recipients.replied_at,
            recipients.bounced_at,
            replies.received_at,
            events.created_at
        ) as as_of_at
    from workspaces
    cross join recipients
    cross join replies
    cross join events
)

select * from clock
