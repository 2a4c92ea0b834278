"""Word lists the seeded data is built from (names, companies, titles, templates)."""

from __future__ import annotations

FIRST_NAMES = (
    "Maria James Sofia Liam Emma Noah Olivia Lucas Ava Ethan Mia Mason Amelia Logan Harper Elijah Ella Aiden "
    "Chloe Mateo Grace Leo Zoe Jack Nora Levi Lily Owen Hannah Ryan Aria Samuel Layla Daniel Priya Arjun "
    "Ananya Rohan Mei Wei Yuki Kenji Fatima Omar Aisha Yusuf Chiara Marco Giulia Luca Ines Pedro Camila "
    "Diego Lucia Javier Anna Jonas Lena Felix Clara Paul Elena Nikolai Olga Ivan Sara Erik Astrid Lars "
    "Freya Sean Aoife Ciaran Niamh Tomasz Zofia Piotr Ewa Thandi Sipho Amara Kwame Chen Lin Hiro Sakura"
).split()

LAST_NAMES = (
    "Smith Johnson Garcia Martinez Brown Lopez Wilson Anderson Taylor Thomas Moore Jackson Martin Lee Perez "
    "Thompson White Harris Clark Lewis Robinson Walker Young Allen King Wright Scott Hill Green Adams Baker "
    "Nelson Carter Mitchell Roberts Turner Phillips Campbell Parker Evans Edwards Collins Stewart Morris "
    "Murphy Cook Rogers Morgan Cooper Peterson Reed Bailey Kelly Howard Ward Cox Richardson Wood Watson "
    "Brooks Bennett Gray James Hughes Price Sanders Patel Sharma Gupta Khan Nguyen Tran Kim Park Chen Wang "
    "Tanaka Suzuki Sato Muller Schmidt Fischer Weber Rossi Russo Bianchi Silva Santos Costa Novak Kowalski "
    "Nowak Jensen Hansen Larsen Andersen Okafor Mensah Dubois Moreau Laurent"
).split()

COMPANY_WORDS_A = (
    "Acme Apex Blue Bright Cedar Clear Cloud Crest Delta Echo Ember Falcon Fern Forge Granite Harbor Helix "
    "Iron Juniper Keystone Lumen Maple Meridian Nimbus North Nova Oak Orbit Peak Pine Pixel Prism Quartz "
    "Quill Rapid River Sage Silver Solar Stone Summit Swift Terra Tidal True Union Vector Vertex Willow Zenith"
).split()

COMPANY_WORDS_B = (
    "Analytics Labs Systems Works Logistics Health Capital Software Robotics Foods Media Networks Energy "
    "Dynamics Partners Studio Bio Security Retail Learning Cloud Data Finance Motors Supply Design Ventures"
).split()

COMPANY_SUFFIX = ("", " Inc", " GmbH", " Ltd", " Group", " Co", " AG", " LLC")

INDUSTRIES = (
    "Software",
    "Financial Services",
    "Healthcare",
    "Retail",
    "Manufacturing",
    "Logistics",
    "Education",
    "Media",
    "Energy",
    "Marketing",
    "Real Estate",
    "Biotech",
)

SIZES = ("1-10", "11-50", "51-200", "201-500", "501-1000", "1001-5000", "5001-10000", "10001+")

COUNTRIES = (
    "United States",
    "United Kingdom",
    "Germany",
    "France",
    "Spain",
    "Netherlands",
    "India",
    "Singapore",
    "Australia",
    "Canada",
    "Brazil",
    "Japan",
)

CITIES = (
    ("New York", "Austin", "San Francisco", "Chicago", "Boston"),
    ("London", "Manchester", "Bristol", "Leeds", "Edinburgh"),
    ("Berlin", "Munich", "Hamburg", "Cologne", "Frankfurt"),
    ("Paris", "Lyon", "Toulouse", "Lille", "Nantes"),
    ("Madrid", "Barcelona", "Valencia", "Seville", "Bilbao"),
    ("Amsterdam", "Rotterdam", "Utrecht", "Eindhoven", "The Hague"),
    ("Bengaluru", "Mumbai", "Pune", "Hyderabad", "Delhi"),
    ("Singapore", "Singapore", "Singapore", "Singapore", "Singapore"),
    ("Sydney", "Melbourne", "Brisbane", "Perth", "Adelaide"),
    ("Toronto", "Vancouver", "Montreal", "Calgary", "Ottawa"),
    ("Sao Paulo", "Rio de Janeiro", "Curitiba", "Recife", "Porto Alegre"),
    ("Tokyo", "Osaka", "Kyoto", "Fukuoka", "Sapporo"),
)

# (title, seniority key); seniority keys are the spec's search values.
TITLES = (
    ("Founder", "founder"),
    ("Co-Founder", "founder"),
    ("Owner", "owner"),
    ("Chief Executive Officer", "c_suite"),
    ("Chief Technology Officer", "c_suite"),
    ("Chief Marketing Officer", "c_suite"),
    ("Chief Financial Officer", "c_suite"),
    ("Managing Partner", "partner"),
    ("VP of Sales", "vp"),
    ("VP of Marketing", "vp"),
    ("VP of Engineering", "vp"),
    ("Head of Growth", "head"),
    ("Head of Operations", "head"),
    ("Head of Data", "head"),
    ("Director of Sales", "director"),
    ("Marketing Director", "director"),
    ("IT Director", "director"),
    ("Sales Manager", "manager"),
    ("Marketing Manager", "manager"),
    ("Product Manager", "manager"),
    ("Operations Manager", "manager"),
    ("Senior Software Engineer", "senior"),
    ("Senior Account Executive", "senior"),
    ("Senior Data Analyst", "senior"),
    ("Account Executive", "entry"),
    ("Sales Development Representative", "entry"),
    ("Marketing Associate", "entry"),
    ("Data Analyst", "entry"),
    ("Marketing Intern", "intern"),
    ("Sales Intern", "intern"),
)

SENIORITY_LABELS = {
    "owner": "Owner",
    "founder": "Founder",
    "c_suite": "C-Suite",
    "partner": "Partner",
    "vp": "VP",
    "head": "Head",
    "director": "Director",
    "manager": "Manager",
    "senior": "Senior",
    "entry": "Entry",
    "intern": "Intern",
}

SUBJECTS = (
    "Quick question, {{first_name|there}}",
    "{{company}} + faster reporting?",
    "Idea for {{company}}",
    "{{first_name|Hi}}, worth a chat?",
    "Cutting churn at {{company}}",
    "A 15-minute intro",
    "Re: your growth plans",
    "{{first_name|Hello}} - saw {{company}} is hiring",
)

BODIES = (
    "Hi {{first_name|there}},\n\nTeams like {{company}} use us to cut reporting time in half. "
    "Open to a 15-minute call next week?\n\nBest,\n{{sender}}",
    "Hello {{first_name|there}},\n\nI noticed {{company}} is growing fast. We help similar teams keep "
    "their pipeline clean without extra headcount. Worth a look?\n\nCheers,\n{{sender}}",
    "{{first_name|Hi}},\n\nOne idea for {{company}}: automate the weekly numbers your team builds by hand. "
    "Happy to share how others did it.\n\n{{sender}}",
    "Hi {{first_name|there}}, short one: would a free audit of {{company}}'s outreach be useful?\n\n{{sender}}",
)

CAMPAIGN_NAMES = (
    "Q1 SaaS founders",
    "EMEA fintech outreach",
    "Healthcare ops leaders",
    "Retail analytics push",
    "Series A follow-up",
    "Logistics pilots",
    "Conference leads Berlin",
    "Webinar attendees",
    "Re-engage cold accounts",
    "Agency partners",
    "APAC expansion",
    "Manufacturing VPs",
)

TIMEZONES = (
    "America/New_York",
    "Europe/London",
    "Europe/Berlin",
    "America/Chicago",
    "America/Los_Angeles",
    "Asia/Singapore",
    "Australia/Sydney",
    "Asia/Kolkata",
)

# Send windows (start, end, days).
WINDOWS = (
    ("08:00", "17:00", ("mon", "tue", "wed", "thu", "fri")),
    ("09:00", "18:00", ("mon", "tue", "wed", "thu", "fri")),
    ("07:30", "19:30", ("mon", "tue", "wed", "thu", "fri", "sat")),
    ("10:00", "16:00", ("tue", "wed", "thu")),
    ("00:00", "23:59", ("mon", "tue", "wed", "thu", "fri", "sat", "sun")),
)

REPLY_TYPES = ("interested", "not_interested", "out_of_office", "wrong_person", "unsubscribe", "auto_reply")
REPLY_TYPE_WEIGHTS = (0.24, 0.27, 0.16, 0.08, 0.07, 0.18)

REPLY_TEXTS = {
    "interested": (
        "Thanks for reaching out - this looks relevant. Could you send a few times for a call next week?",
        "Interesting timing, we were just discussing this. Happy to chat Thursday afternoon.",
        "Sure, let's talk. Can you share pricing beforehand?",
    ),
    "not_interested": (
        "Thanks, but we're not looking at this right now.",
        "We already have a solution in place. Please don't follow up.",
        "Not a fit for us at the moment, good luck.",
    ),
    "out_of_office": (
        "I'm out of the office until next Monday with limited access to email.",
        "Thank you for your message. I am on leave and will reply when I return.",
    ),
    "wrong_person": (
        "I'm not the right person for this - try our operations team.",
        "You probably want to speak to our head of data instead of me.",
    ),
    "unsubscribe": (
        "Please remove me from your list.",
        "Unsubscribe.",
    ),
    "auto_reply": (
        "This is an automated reply: your message has been received and will be answered shortly.",
        "Thanks for contacting us. This mailbox is not monitored; please use our contact form.",
    ),
}

PROVIDERS = ("google", "microsoft", "smtp")
